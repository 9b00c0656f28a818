
Bin1J(Ê

Bin1J	I
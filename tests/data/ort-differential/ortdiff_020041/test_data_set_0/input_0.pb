
Bin1J·HR?
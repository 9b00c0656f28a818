
Bin1Jÿ
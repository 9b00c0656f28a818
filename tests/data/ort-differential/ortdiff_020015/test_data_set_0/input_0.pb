
Bin1JCÅ
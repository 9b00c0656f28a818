
Bin1JHúL
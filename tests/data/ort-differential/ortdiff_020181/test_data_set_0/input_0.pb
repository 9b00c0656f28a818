
Bin1JÁ

Bin1JÄâH	¹
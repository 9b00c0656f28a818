
Bin1JlI
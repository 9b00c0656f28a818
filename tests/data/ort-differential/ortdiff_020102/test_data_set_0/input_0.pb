
Bin1J÷Æ
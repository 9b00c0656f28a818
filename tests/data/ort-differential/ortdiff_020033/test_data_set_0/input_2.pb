
Bin3JLH
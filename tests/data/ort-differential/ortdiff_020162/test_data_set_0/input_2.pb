Bin3J


Bin3JµL
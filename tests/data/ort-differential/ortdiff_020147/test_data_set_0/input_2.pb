
Bin3JèÈ
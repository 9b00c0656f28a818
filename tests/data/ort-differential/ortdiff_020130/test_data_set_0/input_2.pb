
Bin3J‰Ë
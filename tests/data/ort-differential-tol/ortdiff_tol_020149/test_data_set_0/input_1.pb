Bin2J
f
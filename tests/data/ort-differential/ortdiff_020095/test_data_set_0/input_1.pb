
Bin2J=

Bin2J
EbI~
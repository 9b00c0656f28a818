
Bin2JHI
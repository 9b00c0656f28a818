
Bin2JÑ@
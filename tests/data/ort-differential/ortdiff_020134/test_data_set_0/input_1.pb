
Bin2JšÆ
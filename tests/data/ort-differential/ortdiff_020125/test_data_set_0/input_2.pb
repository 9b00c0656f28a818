
Bin3Jÿ²I
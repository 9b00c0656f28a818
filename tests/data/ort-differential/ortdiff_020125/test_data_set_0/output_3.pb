
Bget57Jÿ²I

Bid9J‰Ë
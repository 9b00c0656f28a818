
Blo22J
EbI~

Bso13J,Ç
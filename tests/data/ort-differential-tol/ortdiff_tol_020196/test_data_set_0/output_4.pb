
Bif45J‹E
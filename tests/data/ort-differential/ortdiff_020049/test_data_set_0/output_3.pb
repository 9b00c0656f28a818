
Bif51JÄR½

Bif145J	Ê
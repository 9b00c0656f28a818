
Bout47J	I
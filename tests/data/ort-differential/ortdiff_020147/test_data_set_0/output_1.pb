
Bout41JèÈ

Bif33JŠÈ
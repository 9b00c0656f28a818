Badd118J

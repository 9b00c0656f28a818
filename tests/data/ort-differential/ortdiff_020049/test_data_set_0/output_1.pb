
Bif21J!J[¶
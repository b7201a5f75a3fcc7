BprobJ,DW?ïpâ>4
?˜*@?

BlogitsJ(8`ΩZ„SΩ#Ω8`ΩXRî<xDΩ√ŒÆº‘«≤Ω9ÒKΩXRæ
Bgap_nhwcJ
wŒxo”hoqu
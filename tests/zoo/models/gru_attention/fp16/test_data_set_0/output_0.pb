
BlogitsJ
]°}/14+1
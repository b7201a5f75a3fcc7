

BlogitsJd,«®¨´­¯B8ÿ*é-}2w,ç­
# Floats: parameters, locals, a float return value, float expressions.
break test_main
continue
break lerp if t > 0.4
continue
info args
print d
next
print d
print a + d * t
finish
print acc
print results
print scale * 2
print/x 1.5
info locals
delete
continue

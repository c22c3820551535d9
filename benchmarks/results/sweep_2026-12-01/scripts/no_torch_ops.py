print("hello, nothing here")

TABLE = {"double": 2.0}


def parse(name):
    return TABLE[name]

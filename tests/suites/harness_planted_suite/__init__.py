"""A planted suite, installed into the tests' site-packages by the test that uses it (as a suite is
installed: the harness's source reproducer then imports it by name, and only a standalone one writes
its source in). Its model counts its calls in Python: ``to_static`` bakes the count in at trace time."""

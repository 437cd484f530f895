# A declared start-up hook for examples/diagnose.toml: it runs only in the matrix's
# start-up-override arm, approved there by fingerprint (C6). It changes nothing but the
# interpreter's start-up path, which is exactly the factor that arm isolates.
import os  # noqa: F401

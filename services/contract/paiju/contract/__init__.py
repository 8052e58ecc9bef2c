"""The contract in Python: codecs between the rules cores' and services' dataclasses and the generated protobuf
messages (`paiju.v1`, from `protos/`), and mappings between contract messages."""

"""The platform shared by Paiju's services: the gRPC edge (`edge`: decoding, validation, tokens, limits, the error
model) and the refusals every use case raises (`errors`)."""

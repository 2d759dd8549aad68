# Shortcuts for the scripts in scripts/ (which are what CI runs).
#   make test        every test (scripts/test.sh)
#   make test-numa   the multi-node NUMA suite in a QEMU guest; ARGS="-v --only bind"
.PHONY: test test-numa
test:
	scripts/test.sh
test-numa:
	scripts/test-numa.sh $(ARGS)

"""The test harness: what the tests and the command lines of tools/ share.

- backend_cases: onnx's backend node test cases (generated from the installed onnx);
- compare: the one comparison of a result with its reference (dtype, shape, values);
- modules: the one way to import a generated module;
- conformance: compile and run backend cases, compare with their data;
- oracle (with the case tables of oracle_cases/): single-operator models against onnxruntime;
- microsoft_oracle: the same for onnxruntime's own operators (com.microsoft; its own table);
- bit_identity: digests of exact modules' outputs under several environments.

Importing this package imports nothing else: the bit-identity run step imports the harness under a
numpy-1.26 environment that has neither onnx nor the compiler.
"""

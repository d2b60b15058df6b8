// Shared helpers of the tokenizer tests: where the repository's files are (tests/test_paths.h).
#pragma once

#include "test_paths.h"

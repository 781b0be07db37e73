// torchrun's error file. torchelastic gives each worker TORCHELASTIC_ERROR_FILE; a Python worker
// wrapped in @record writes its exception there, and torchrun's failure summary shows it (else
// "error_file: <N/A>"). A failing trainrun worker writes the same JSON with its one-line error.
#pragma once

#include <string>

namespace trainrun {

// Writes {"message": {"message": MESSAGE, "extraInfo": {"py_callstack": MESSAGE, "timestamp":
// "<seconds>"}}} (ErrorHandler.record_exception's layout) to $TORCHELASTIC_ERROR_FILE when it is
// set; does nothing otherwise. Never throws: the error being reported matters more.
void record_error_for_launcher(const std::string& message);

}  // namespace trainrun

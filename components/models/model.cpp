// WithoutWeightInit (model.h): a thread-local flag the model families' init_weights read.
#include "components/models/model.h"

namespace trainrun {
namespace {
thread_local bool skip_init = false;
}  // namespace

WithoutWeightInit::WithoutWeightInit() : before_(skip_init) { skip_init = true; }
WithoutWeightInit::~WithoutWeightInit() { skip_init = before_; }
bool weight_init_skipped() { return skip_init; }

}  // namespace trainrun

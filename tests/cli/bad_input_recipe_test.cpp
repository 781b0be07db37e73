// Bad inputs of the recipe and the command line (docs/reference/bad-inputs.md; the fixture:
// bad_input.h): syntax, misspelt keys and values, base recipes, overrides, registry names.
#include "bad_input.h"

namespace trainrun::bad_input {
namespace {

TEST_F(BadInput, YamlSyntax) {
  expect_bad_input(recipe("lr: 1.0e-3}", "lr: 1.0e-3"),
                   (dir / "recipe.yaml") + ":11:6: YAML syntax error: end of map flow not found");
}

TEST_F(BadInput, MisspeltSection) {
  expect_bad_input(recipe("optimizer:", "optimzer:"), (dir / "recipe.yaml") + ":10:1: optimzer: unknown key (did you mean 'optimizer'?)");
}

TEST_F(BadInput, MisspeltKeyInASection) {
  expect_bad_input(recipe("batch_size:", "batch_sise:"),
                   (dir / "recipe.yaml") + ":6:3: data.batch_sise: unknown key (did you mean 'batch_size'?)");
}

TEST_F(BadInput, MisspeltComponentParameter) {
  expect_bad_input(recipe("{name: basicnet}", "{name: basicnet, dropout: 0.1}"),
                   (dir / "recipe.yaml") + ":2:25: model.dropout: unknown key (did you mean 'dropout1'?)");
}

TEST_F(BadInput, MisspeltKeyInAListItem) {
  expect_bad_input(recipe("[to_tensor, normalize]", "[to_tensor, {normalize: {meen: model}}]"),
                   (dir / "recipe.yaml") + ":5:46: data.train_transforms[1].normalize.meen: unknown key (did you mean 'mean'?)");
}

// A key the command line misspells, in a section or as the section itself, names the override.
TEST_F(BadInput, MisspeltKeyInAnOverride) {
  expect_bad_input(recipe() + " optimizer.lrr=1", "command line 'optimizer.lrr=1': optimizer.lrr: unknown key (did you mean 'lr'?)");
  expect_bad_input(recipe() + " wrld.nproc_per_node=2",
                   "command line 'wrld.nproc_per_node=2': wrld: unknown key (did you mean 'world'?)");
}

TEST_F(BadInput, WrongType) {
  expect_bad_input(recipe("epochs: 1", "epochs: two"), (dir / "recipe.yaml") + ":11:17: train.epochs: expected an integer, got 'two'");
}

TEST_F(BadInput, OutOfRangeValue) {
  expect_bad_input(recipe("batch_size: 32", "batch_size: 0"), (dir / "recipe.yaml") + ":6:15: data.batch_size: must be >= 1, got 0");
  expect_bad_input(recipe() + " model.name=resnet18 model.drop_path_rate=1.0",
                   "command line 'model.drop_path_rate=1.0': model.drop_path_rate: must be < 1, got 1.0");
}

// Schedules (issue 29): keys that conflict, a schedule that cannot run under this recipe, a value
// only the schedule can judge against the optimizer; each before the run starts.
TEST_F(BadInput, SchedulerKeys) {
  expect_bad_input(recipe() + " 'scheduler={name: linear, warmup_steps: 2, warmup_ratio: 0.1}'",
                   "scheduler.warmup_ratio: set warmup_steps or warmup_ratio, not both");
  expect_bad_input(recipe() + " 'scheduler={name: reduce_on_plateau}' train.eval_every=never",
                   "scheduler.name: reduce_on_plateau decides after each evaluation, and train.eval_every is never");
  expect_bad_input(recipe() + " 'scheduler={name: reduce_on_plateau, metric: f1}'",
                   "command line 'scheduler={name: reduce_on_plateau, metric: f1}': scheduler.metric: unknown value 'f1'; one of: "
                   "eval_loss, eval_accuracy, eval_top5, eval_f1_macro, eval_balanced_accuracy, eval_map, eval_map_micro, "
                   "eval_f1_micro, eval_f1_samples, eval_precision, eval_recall, loss, accuracy, top5, f1_macro, "
                   "balanced_accuracy, map, map_micro, f1_micro, f1_samples, precision, recall");
  expect_bad_input(recipe() + " 'scheduler={name: reduce_on_plateau, metric: map}'",
                   "scheduler.metric: map is a multi-label metric, but train.task is single_label");
  expect_bad_input(recipe() + " 'scheduler={name: polynomial, lr_end: 0.01}'",
                   "scheduler.lr_end: 0.01 must be smaller than optimizer.lr 0.001 (transformers raises here too)");
  expect_bad_input(recipe() + " 'scheduler={name: onecycle, max_lr: 0.01, warmup_steps: 2}'",
                   "command line 'scheduler={name: onecycle, max_lr: 0.01, warmup_steps: 2}': scheduler.warmup_steps: unknown key");
}

// Augmentation parameters (issue 28): a value the schema bounds is refused with its line and
// column; one only the transform can judge (a relation between keys, a channel count) is refused
// by the preflight's sample, naming the transform; both before anything is written.
TEST_F(BadInput, AugmentationParameters) {
  const std::string tf = "train_transforms: [to_tensor, normalize]";
  auto with = [&](const std::string& transforms) { return recipe(tf, "train_transforms: " + transforms); };
  expect_bad_input(with("[color_jitter: {hue: 0.7}, to_tensor]"),
                   (dir / "recipe.yaml") + ":5:42: data.train_transforms[0].color_jitter.hue: must be <= 0.5, got 0.7");
  expect_bad_input(with("[auto_augment: {policy: coco}, to_tensor]"),
                   (dir / "recipe.yaml") + ":5:45: data.train_transforms[0].auto_augment.policy: unknown value 'coco'; one of: imagenet, cifar10, svhn");
  expect_bad_input(with("[resize: {size: 32, interpolation: lanczos}, to_tensor]"),
                   (dir / "recipe.yaml") + ":5:56: data.train_transforms[0].resize.interpolation: unknown value 'lanczos'; one of: bilinear, bicubic, nearest");
  expect_bad_input(with("[rand_augment: {magnitude: 31}, to_tensor]"),
                   "data.train_transforms[0]: magnitude: must be < num_magnitude_bins (31)");
  expect_bad_input(with("[color_jitter: {brightness: [1.5, 0.5]}, to_tensor]"),
                   "data.train_transforms[0]: brightness: expected one number or [min, max] with min <= max");
  expect_bad_input(with("[gaussian_blur: {kernel_size: 4}, to_tensor]"),
                   "data.train_transforms[0]: kernel_size: expected odd numbers, one or [width, height]");
  expect_bad_input(with("[random_affine: {degrees: 10, shear: [1, 2, 3]}, to_tensor]"),
                   "data.train_transforms[0]: shear: expected one number, [min, max] or [x0, x1, y0, y1]");
  expect_bad_input(with("[random_erasing: {p: 1.0}, to_tensor]"),
                   "data.train_transforms: cannot transform an example: random_erasing: needs a float C x H x W tensor; put it after to_tensor");
  expect_bad_input(with("[to_tensor, random_erasing: {value: [1, 2]}]"),
                   "data.train_transforms: cannot transform an example: random_erasing: 2 values for an image with 1 channels");
}

// data.mixup: checked under its own path; not together with a mixup in batch_transforms.
TEST_F(BadInput, MixupKey) {
  const std::string tf = "train_transforms: [to_tensor, normalize]";
  expect_bad_input(recipe(tf, tf + "\n  mixup: {mixup_alpha: -1}"),
                   (dir / "recipe.yaml") + ":6:24: data.mixup.mixup_alpha: must be >= 0, got -1");
  expect_bad_input(recipe(tf, tf + "\n  mixup: {mode: row}"),
                   (dir / "recipe.yaml") + ":6:17: data.mixup.mode: unknown value 'row'; one of: batch, pair, elem");
  expect_bad_input(recipe(tf, tf + "\n  mixup: {}\n  batch_transforms: [mixup]"),
                   (dir / "recipe.yaml") + ":6:10: data.mixup: data.batch_transforms has a mixup already; give one of the two");
}

// optimizer.layer_decay / groups, the freeze rules' lr_scale, train.ema and the best-model keys.
TEST_F(BadInput, ParamGroupEmaAndBestModelKeys) {
  const std::string opt = "optimizer: {name: adamw, lr: 1.0e-3";
  expect_bad_input(recipe(opt, opt + ", layer_decay: 1.5"), (dir / "recipe.yaml") + ":10:51: optimizer.layer_decay: must be <= 1, got 1.5");
  expect_bad_input(recipe(opt, opt + ", groups: [{params: 'fc*', lr_scal: 2}]"), (dir / "recipe.yaml") + ":10:63: optimizer.groups[0].lr_scal: unknown key (did you mean 'lr_scale'?)");
  expect_bad_input(recipe(opt, opt + ", groups: [{lr_scale: 2}]"), (dir / "recipe.yaml") + ":10:47: optimizer.groups[0].params: missing (glob over parameter names (`fc.*`, `layer4.*`))");
  const std::string train = "log_every_steps: 2}";
  expect_bad_input(recipe(train, "log_every_steps: 2, ema: {decya: 0.9}}"), (dir / "recipe.yaml") + ":11:57: train.ema.decya: unknown key (did you mean 'decay'?)");
  expect_bad_input(recipe(train, "log_every_steps: 2, ema: {decay: 2}}"), (dir / "recipe.yaml") + ":11:64: train.ema.decay: must be <= 1, got 2");
  expect_bad_input(recipe() + " 'freeze=[{params: \"*\", trainable: true, lr_scale: 0}]'", "command line 'freeze=[{params: \"*\", trainable: true, lr_scale: 0}]': freeze[0].lr_scale: must be > 0, got 0");
  expect_bad_input(recipe() + " train.eval_every=never output.load_best_model_at_end=true", "output.load_best_model_at_end: needs evaluated checkpoints to choose from, but train.eval_every is never");
  expect_bad_input(recipe() + " output.metric_for_best_model=ema_accuracy", "output.best_metric: eval_ema_accuracy is an EMA metric, but train.ema is null");
  expect_bad_input(recipe() + " output.best_metric=accuracy output.metric_for_best_model=top5", "output.metric_for_best_model: eval_top5 and output.best_metric: eval_accuracy name different metrics; give one");
}

// Fewer outputs than the data has classes would fail only at the first batch with a higher label
// (after the run folder was written); more outputs are allowed (a head with spare classes).
TEST_F(BadInput, FewerModelOutputsThanClasses) {
  expect_bad_input(recipe("{name: basicnet}", "{name: basicnet, num_classes: 3}"),
                   "model.num_classes: 3 outputs for a dataset of 10 classes (labels 0-9); use auto, or 10 or more");
  auto r = test::run(test::trainrun("check " + recipe() + " model.num_classes=12"));
  EXPECT_EQ(r.code, 0) << r.err;
}

// train.loss.weight: one number per model output (F.cross_entropy raises at the first batch
// otherwise), each >= 0, not all 0; `balanced` needs every class in the training split, as sklearn.
TEST_F(BadInput, LossWeightOfTheWrongLength) {
  expect_bad_input(recipe("loss: nll", "loss: {name: nll, weight: [1, 2, 3]}"),
                   "train.loss.weight: 3 weights for 10 classes (model.num_classes); give one per class, or balanced");
}

TEST_F(BadInput, NegativeLossWeight) {
  expect_bad_input(recipe("loss: nll", "loss: {name: nll, weight: [1, 1, 1, -0.5, 1, 1, 1, 1, 1, 1]}"),
                   (dir / "recipe.yaml") + ":11:46: train.loss.weight: item 3: must be >= 0, got -0.5");
}

TEST_F(BadInput, AllLossWeightsZero) {
  expect_bad_input(recipe("loss: nll", "loss: {name: nll, weight: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0]}"),
                   "train.loss.weight: every weight is 0, so the weighted mean loss is 0 / 0; give some class a weight > 0");
}

TEST_F(BadInput, MisspeltLossWeightWord) {
  expect_bad_input(recipe("loss: nll", "loss: {name: nll, weight: balance}"),
                   (dir / "recipe.yaml") + ":11:46: train.loss.weight: expected a list[float] or 'balanced', got 'balance' "
                                      "(did you mean 'balanced'?)");
}

// Fashion-MNIST's first 5 training labels are 9, 0, 0, 3, 0: no trouser (1) to count.
TEST_F(BadInput, BalancedLossWeightWithAClassMissingFromTraining) {
  expect_bad_input(recipe("loss: nll", "loss: {name: nll, weight: balanced}") + " data.max_train_samples=5",
                   "train.loss.weight: balanced: class '1' (label 1) has no training examples, so n_samples / "
                   "(n_classes * count) has no value (sklearn refuses it too); give the weights as a list");
}

TEST_F(BadInput, MisspeltSampler) {
  expect_bad_input(recipe("workers: 1", "workers: 1\n  sampler: weigthed"),
                   (dir / "recipe.yaml") + ":10:12: data.sampler: unknown value 'weigthed' (did you mean 'weighted'?); "
                                      "one of: random, weighted");
}

// train.activation_checkpointing names the model's stages (`describe` lists the resnets'); a
// model without stages takes only false.
TEST_F(BadInput, ActivationCheckpointingStage) {
  expect_bad_input(recipe() + " model.name=resnet18 'train.activation_checkpointing=[layer1, layr3]'",
                   "train.activation_checkpointing: 'layr3' is not a stage of resnet18 (did you mean 'layer3'?); "
                   "its stages: layer1, layer2, layer3, layer4");
  expect_bad_input(recipe() + " train.activation_checkpointing=true",
                   "train.activation_checkpointing: basicnet has no stages to checkpoint; use false");
  expect_bad_input(recipe("log_every_steps: 2}", "log_every_steps: 2, activation_checkpointing: yes}"),
                   (dir / "recipe.yaml") + ":11:77: train.activation_checkpointing: expected a list or 'true' or 'false', got 'yes'");
}

// The recipe argument itself: missing, a folder, unreadable.
TEST_F(BadInput, RecipeFileThatCannotBeRead) {
  fs::create_directories(dir / "folder.yaml");
  for (const std::string command : {"check ", ""}) {
    expect_err(test::run(test::trainrun(command + (dir / "none.yaml"))), 2, (dir / "none.yaml") + ": no such recipe file\n");
    expect_err(test::run(test::trainrun(command + (dir / "folder.yaml"))), 2,
               (dir / "folder.yaml") + ": is a folder, not a recipe file\n");
  }
  if (::geteuid() != 0) {  // root reads a file whatever its mode (so the page's row does not list this line)
    std::string file = recipe();
    fs::permissions(file, fs::perms::none);
    auto r = test::run(test::trainrun("check " + file));
    EXPECT_EQ(r.code, 2);
    EXPECT_EQ(r.err, file + ": cannot read the recipe: Permission denied\n");
  }
  EXPECT_FALSE(fs::exists(dir / "run"));
}

// `base:` (recipe inheritance) naming a file that is not there: the line of the entry.
TEST_F(BadInput, MissingBaseRecipe) {
  expect_bad_input(recipe("name: bad_input\n", "name: bad_input\nbase: common.yaml\n"),
                   (dir / "recipe.yaml") + ":2:7: base: " + (dir / "common.yaml") + ": no such recipe file");
}

// Bases that lead back to a recipe already being read: the chain, at the entry that closes it.
TEST_F(BadInput, BaseRecipeCycle) {
  test::write_file(dir / "common.yaml", "base: recipe.yaml\nseed: 1\n");
  expect_bad_input(recipe("name: bad_input\n", "name: bad_input\nbase: common.yaml\n"),
                   (dir / "common.yaml") + ":1:7: base: a cycle: " + (dir / "recipe.yaml") + " -> " + (dir / "common.yaml") +
                       " -> " + (dir / "recipe.yaml"));
}

TEST_F(BadInput, BaseThatIsNotAFileName) {
  expect_bad_input(recipe("name: bad_input\n", "name: bad_input\nbase: {file: common.yaml}\n"),
                   (dir / "recipe.yaml") + ":2:7: base: expected a recipe file or a list of recipe files, got a mapping");
  expect_bad_input(recipe("name: bad_input\n", "name: bad_input\nbase: [common.yaml, [other.yaml]]\n"),
                   (dir / "recipe.yaml") + ":2:21: base[1]: expected a recipe file, got a list");
}

// A key misspelt in a base is reported at the base's line, whichever recipe builds on it.
TEST_F(BadInput, MisspeltKeyInABaseRecipe) {
  std::string base = recipe("batch_size: 32", "batch_sise: 32");
  fs::rename(base, dir / "base.yaml");
  test::write_file(dir / "recipe.yaml", "base: base.yaml\noutput: {dir: " + (dir / "run") + "}\n");
  expect_bad_input(dir / "recipe.yaml", (dir / "base.yaml") + ":6:3: data.batch_sise: unknown key (did you mean 'batch_size'?)");
}

// The list of registered names ends the line; plugins may add to it.
TEST_F(BadInput, UnknownRegistryName) {
  std::string args = recipe("{name: basicnet}", "{name: resnet19}");
  for (const std::string command : {"check ", ""}) {
    auto r = test::run(test::trainrun(command + args));
    EXPECT_EQ(r.code, 2) << r.err;
    const std::string head = (dir / "recipe.yaml") + ":2:15: model.name: unknown model 'resnet19' (did you mean 'resnet18'?); one of: ";
    ASSERT_EQ(r.err.rfind(head, 0), 0u) << r.err;
    // Every registered model, sorted: the list is the registry's, not a copy.
    std::string listed = r.err.substr(head.size());
    listed.erase(listed.find_last_not_of('\n') + 1);
    std::vector<std::string> names;
    for (std::size_t at = 0; at <= listed.size();) {
      std::size_t comma = listed.find(", ", at);
      names.push_back(listed.substr(at, comma == std::string::npos ? std::string::npos : comma - at));
      at = comma == std::string::npos ? listed.size() + 1 : comma + 2;
    }
    EXPECT_TRUE(std::is_sorted(names.begin(), names.end())) << listed;
    for (const char* name : {"basicnet", "resnet18", "resnet50d", "convnext_tiny", "vit_small_patch16_224", "efficientnet_b0"})
      EXPECT_NE(std::find(names.begin(), names.end(), name), names.end()) << name << " not in: " << listed;
    EXPECT_EQ(test::count_lines(r.err), 1) << r.err;
    saw(head + "<every registered model, sorted>", r.code);
  }
  EXPECT_FALSE(fs::exists(dir / "run"));
}

// timm's and the Trainer's habit (`--epochs 3`): a recipe key given as an option names its
// override; an option named like no key (not even nearly: that would be a guess) is CLI11's error.
TEST_F(BadInput, RecipeKeyGivenAsAnOption) {
  expect_bad_input(recipe() + " --epochs 3", "--epochs: not an option; recipe keys are overrides: use train.epochs=3");
  expect_bad_input(recipe() + " --batch-size=64", "--batch-size: not an option; recipe keys are overrides: use data.batch_size=64");
  expect_bad_input(recipe() + " --seed 7", "--seed: not an option; recipe keys are overrides: use seed=7");
  for (const std::string option : {"--verbose", "--epoch"}) {
    auto r = test::run(test::trainrun(recipe() + " " + option + " 3"));
    EXPECT_EQ(r.code, 2) << r.err;
    EXPECT_EQ(r.err, "The following argument was not expected: " + option + "\nRun with --help for more information.\n");
  }
}

// A key without its section is found by its last part across the sections.
TEST_F(BadInput, KeyWithoutItsSection) {
  expect_bad_input(recipe() + " epochs=2", "command line 'epochs=2': epochs: unknown key (did you mean 'train.epochs'?)");
  expect_bad_input(recipe() + " lr=3e-4", "command line 'lr=3e-4': lr: unknown key (did you mean 'optimizer.lr'?)");
}

TEST_F(BadInput, OverrideBeforeTheRecipe) {
  expect_bad_input("train.epochs=1 " + recipe(), "train.epochs=1: the recipe file comes first: trainrun RECIPE.yaml [key=value ...]");
}

// The paths errors and `check --origin` print are overrides too (an index into a list, then keys;
// `normalize` written by name alone is opened); an index past the list's end names the override.
TEST_F(BadInput, OverrideOfAListItem) {
  auto r = test::run(test::trainrun("check " + recipe() + " 'data.train_transforms[1].normalize.mean=[0.5]' --origin"));
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(std::regex_search(r.out, std::regex(R"(\ndata\.train_transforms\[1\]\.normalize\.mean: \[0\.5\] +# command line )"
                                                  R"('data\.train_transforms\[1\]\.normalize\.mean=\[0\.5\]'\n)")))
      << r.out;
  expect_bad_input(recipe() + " 'data.train_transforms[2].normalize.mean=[0.5]'",
                   "command line 'data.train_transforms[2].normalize.mean=[0.5]': data.train_transforms[2]: no such item; "
                   "data.train_transforms has 2 (0 to 1)");
}

// A tab in the indentation, or an indentation no block above has: said so, where yaml-cpp says
// "end of map not found".
TEST_F(BadInput, YamlTabOrIndentation) {
  expect_bad_input(recipe("  batch_size: 32", "\tbatch_size: 32"),
                   (dir / "recipe.yaml") + ":6:1: YAML syntax error: a tab in the indentation; YAML indents with spaces only");
  expect_bad_input(recipe("  batch_size: 32", "   batch_size: 32"),
                   (dir / "recipe.yaml") + ":6:4: YAML syntax error: bad indentation: 3 spaces, where the lines above are indented 0 or 2");
}

// Early stopping by an EMA metric needs train.ema (with it, tests/train/ema_test.cpp runs one).
TEST_F(BadInput, EarlyStoppingOnAnEmaMetricWithoutEma) {
  expect_bad_input(recipe() + " 'callbacks=[{name: early_stopping, metric: ema_accuracy}]'",
                   "callbacks[0].metric: eval_ema_accuracy is an EMA metric, but train.ema is null");
  expect_bad_input(recipe() + " 'train.ema={decay: 0.9}' 'callbacks=[{name: early_stopping, metric: eval_ema_top5}]'",
                   "callbacks[0].metric: eval_ema_top5 is not evaluated: train.metrics has no top5");
}

// data.global_batch_size that this world cannot make with data.batch_size (docs/guides/resume.md:
// the global batch is what a run resumed on another world keeps).
TEST_F(BadInput, GlobalBatchTheWorldCannotMake) {
  expect_bad_input(recipe() + " data.global_batch_size=96 world.nproc_per_node=2",
                   "data.global_batch_size: 96 is not data.batch_size 32 x 2 processes x a whole number of accumulation "
                   "steps; data.batch_size 12, 16, 24, 48 would make it on 2 processes; 1, 3 processes would with "
                   "data.batch_size 32");
}

}  // namespace
}  // namespace trainrun::bad_input

// support/durable_file.h: whole files or none, and errors that name the file and the reason.
#include "support/durable_file.h"
#include "test_util.h"

#include <filesystem>

namespace trainrun {
namespace {
namespace fs = std::filesystem;

TEST(DurableFile, AtomicWriteReplacesTheFileWithThePiecesInOrder) {
  test::TempDir dir;
  std::string path = dir / "report.json";
  write_file_atomic(path, "old contents\n");
  EXPECT_EQ(test::read_file(path), "old contents\n");
  std::string a = "first,", b = "second";
  write_file_atomic(path, {{a.data(), a.size()}, {b.data(), b.size()}, {"", 0}});
  EXPECT_EQ(test::read_file(path), "first,second");
  EXPECT_FALSE(fs::exists(path + ".tmp"));
}

TEST(DurableFile, AFailedWriteLeavesTheOldFileAndNoTemporary) {
  test::TempDir dir;
  std::string path = dir / "model.safetensors";
  write_file_atomic(path, "good weights");
  // The temporary name is taken by a folder: opening it for writing fails.
  fs::create_directory(path + ".tmp");
  std::string err = test::error_of<FileWriteError>([&] { write_file_atomic(path, "new weights"); });
  EXPECT_EQ(err.rfind(path + ": cannot write: ", 0), 0u) << err;
  EXPECT_EQ(test::read_file(path), "good weights");
}

TEST(DurableFile, AFullDiskIsNamedWithTheSystemsReason) {
  // /dev/full fails every write with ENOSPC, as a full file system does.
  if (!fs::exists("/dev/full")) GTEST_SKIP() << "no /dev/full here";
  std::string err = test::error_of<FileWriteError>([] { write_durable("/dev/full", std::string(4096, 'x')); });
  EXPECT_EQ(err, "/dev/full: write failed: No space left on device");
  test::TempDir dir;
  EXPECT_EQ(test::error_of<FileWriteError>([&] { write_file_atomic(dir / "no/such/folder/x.json", "{}"); }),
            dir / "no/such/folder/x.json" + ": cannot write: No such file or directory");
}

}  // namespace
}  // namespace trainrun

// fleet::WitnessFrames: a SUBMIT's witness frames, chunked into one buffer
// and split back by size.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "zkfleet/fleet/frames.hpp"

namespace zkfleet::fleet {
namespace {

TEST(WitnessFrames, ChunksPointIntoOneBufferAndSplitBackBySize) {
  std::string a(kWitnessChunkBytes * 2 + 3, 'a');
  const char* a_data = nullptr;
  std::vector<WitnessFrames> witnesses;
  {
    zmq::message_t whole = FrameFromString(a);
    a_data = static_cast<const char*>(whole.data());
    witnesses.push_back(ChunkWitness(std::move(whole)));
  }
  witnesses.push_back(ChunkWitness(FrameFromString("bb")));
  ASSERT_EQ(witnesses[0].chunks.size(), 3u);
  // No copy: the chunks are views into the one buffer, kept alive by them.
  EXPECT_EQ(static_cast<const char*>(witnesses[0].chunks[1].data()), a_data + kWitnessChunkBytes);
  EXPECT_EQ(witnesses[0].size(), a.size());

  std::string why;
  auto split = SplitWitnesses(FlattenWitnesses(std::move(witnesses)), {a.size(), 2}, &why);
  ASSERT_TRUE(split) << why;
  ASSERT_EQ(split->size(), 2u);
  EXPECT_EQ((*split)[0].chunks.size(), 3u);
  EXPECT_EQ((*split)[1].chunks[0].to_string(), "bb");
}

TEST(WitnessFrames, FramesThatDoNotMatchTheSizesAreRefused) {
  auto frames = [] {
    Frames f;
    f.push_back(FrameFromString("1234"));
    f.push_back(FrameFromString("56"));
    return f;
  };
  std::string why;
  EXPECT_TRUE(SplitWitnesses(frames(), {6}, &why));
  EXPECT_TRUE(SplitWitnesses(frames(), {4, 2}, &why));
  EXPECT_FALSE(SplitWitnesses(frames(), {5, 1}, &why));  // a frame would straddle two witnesses
  EXPECT_NE(why.find("straddles"), std::string::npos) << why;
  EXPECT_FALSE(SplitWitnesses(frames(), {7}, &why));     // too few bytes
  EXPECT_FALSE(SplitWitnesses(frames(), {4}, &why));     // frames left over
  EXPECT_FALSE(SplitWitnesses(frames(), {0, 6}, &why));  // empty witness
  Frames huge;
  huge.push_back(FrameFromString(std::string(kMaxWitnessChunkBytes + 1, 'x')));
  EXPECT_FALSE(SplitWitnesses(std::move(huge), {kMaxWitnessChunkBytes + 1}, &why));  // frame above the chunk limit
  EXPECT_NE(why.find("frames must hold"), std::string::npos) << why;
}

}  // namespace
}  // namespace zkfleet::fleet

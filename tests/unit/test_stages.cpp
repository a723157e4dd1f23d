// The stage declarations: every declared stage builds from its declaration alone (the registry
// has no stage without a builder), values are checked and named as the caller says, and the taps
// the tools take from a stage call are the stage's own.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "ooc/error.hpp"
#include "ooc/filter.hpp"
#include "ooc/pipeline.hpp"

namespace ooc {
namespace {

// A value inside the declared range of each kind, for the required parameters.
std::string sample_value(const StageParam& p) {
  switch (p.kind) {
    case StageParam::Kind::number:
      return p.min > 0 || p.min_open ? std::to_string(p.min + 1.5) : "1";
    case StageParam::Kind::integer:
      return "3";
    case StageParam::Kind::taps:
      return "1,2,1";
    case StageParam::Kind::type:
      return "u16";
    case StageParam::Kind::text:
      return "laplace";
    case StageParam::Kind::size:
      return "3";
  }
  return "";
}

TEST(Stages, EveryDeclarationBuildsAndRunsItsCheck) {
  const ImageSpec image{40, 30, 2, SampleType::u8};
  const ImageSpec volume2c{40, 30, 2, SampleType::u8, 3};
  std::set<std::string> names;
  for (const StageDecl& d : stage_declarations()) {
    SCOPED_TRACE(d.name);
    EXPECT_TRUE(names.insert(d.name).second) << "declared twice";
    EXPECT_FALSE(d.help.empty());
    StageCall call{d.name, {}};
    for (const StageParam& p : d.params) {
      EXPECT_FALSE(p.help.empty()) << p.name;
      EXPECT_EQ(&stage_parameter(d.name, p.name), &p);
      // gaussian's sigma is not required (sigmas or sigma-um may stand for it), nor are the
      // compound stages' sigmas (their -um forms may), but one is.
      if (p.required() || (p.kind == StageParam::Kind::size && p.computed == "none") ||
          (d.name == "gaussian" && p.name == "sigma") || p.computed == p.name + "-um")
        call.args.emplace_back(p.name, parse_stage_value(p, sample_value(p), p.name));
    }
    // The text a user would write parses back to the same call.
    const auto parsed = parse_pipeline({call.text()});
    ASSERT_EQ(parsed.size(), 1u);
    EXPECT_EQ(parsed[0].text(), call.text());
    // A projection takes a volume; every other stage an image, and a volume where it declares
    // a 3-D version (else it names --planes). label takes one channel (and gives u32 labels).
    const ImageSpec mono{40, 30, 1, SampleType::u8}, mono_volume{40, 30, 1, SampleType::u8, 3};
    const bool one_channel = d.name == "label";
    const ImageSpec& volume = one_channel ? mono_volume : volume2c;
    const ImageSpec& in = d.name == "project" ? volume : one_channel ? mono : image;
    if (d.name == "project") {
      EXPECT_THROW(PipelinePlan(image, parsed, PipelineSettings{}), Error);
    }
    // convolve's sample kernel (laplace) is 2-D: a volume takes a 3-D one, as scipy's does.
    if (d.volume && d.name == "convolve") {
      EXPECT_THROW(PipelinePlan(volume, parsed, PipelineSettings{}), Error);
    } else if (d.volume) {
      EXPECT_NO_THROW(PipelinePlan(volume, parsed, PipelineSettings{}));
    } else {
      EXPECT_THROW(PipelinePlan(volume, parsed, PipelineSettings{}), Error);
      PipelineSettings planes;
      planes.planes = true;
      EXPECT_EQ(PipelinePlan(volume, parsed, planes).output().depth, volume.depth);
    }
    PipelinePlan plan(in, parsed, PipelineSettings{});
    EXPECT_EQ(plan.passes(), d.reduction ? 2 : 1);
    EXPECT_EQ(plan.output().width, in.width);
    EXPECT_EQ(plan.output().depth, d.name == "project" ? 1 : in.depth);
    // The input's type, unless the stage converts (to u16 here).
    EXPECT_EQ(plan.output().type, d.name == "convert" ? SampleType::u16
                                  : d.name == "label" ? SampleType::u32
                                                      : in.type);
  }
  EXPECT_THROW(stage_declaration("blur"), Error);
  EXPECT_THROW(stage_parameter("gaussian", "size"), Error);
}

TEST(Stages, ValuesAreCheckedAndNamedAsTheCallerSays) {
  const StageParam& sigma = stage_parameter("gaussian", "sigma");
  EXPECT_EQ(std::get<double>(parse_stage_value(sigma, "0.5", "--sigma")), 0.5);
  EXPECT_NO_THROW(check_stage_value(sigma, 0.5, "--sigma"));
  EXPECT_THROW(check_stage_value(sigma, 0.0, "--sigma"), Error);
  EXPECT_THROW(check_stage_value(sigma, std::string("0.5"), "--sigma"), Error);
  for (const char* bad : {"0", "-1", "nan", "inf", "2x", ""}) {
    try {
      (void)parse_stage_value(sigma, bad, "--sigma");
      ADD_FAILURE() << bad << " passed";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::usage);
      EXPECT_EQ(std::string(e.what()).rfind("--sigma must be", 0), 0u) << e.what();
    }
  }
  EXPECT_THROW(parse_stage_value(stage_parameter("uniform", "size"), "2.5", "size"), Error);
  EXPECT_THROW(parse_stage_value(stage_parameter("separable", "row"), "1,2", "--taps"), Error);
  EXPECT_THROW(parse_stage_value(stage_parameter("convert", "type"), "f16", "type"), Error);
  EXPECT_THROW(
      check_stage_value(stage_parameter("separable", "row"), std::vector<double>{1, 2}, "--taps"),
      Error);
  EXPECT_EQ(
      std::get<std::int64_t>(parse_stage_value(stage_parameter("uniform", "size"), "5", "size")),
      5);
}

TEST(Stages, TapsOfAStageCallAreTheStagesOwn) {
  // --radius 4 alone is sigma 4/3: the stage's radius and sigma give oocconv's taps.
  const SeparableFilter g = stage_taps({"gaussian", {{"sigma", 4.0 / 3}, {"radius", 4}}});
  EXPECT_EQ(g.row, gaussian_taps(4, 0));
  EXPECT_EQ(g.col, g.row);
  EXPECT_EQ(stage_taps({"gaussian", {{"sigma", 2.0}}}).row, gaussian_taps(6, 2));
  EXPECT_EQ(stage_taps({"uniform", {{"size", 5}}}).row, box_taps(2));
  // An even size as scipy places it (offsets -2..1): the far tap of convolution order weighs 0.
  EXPECT_EQ(stage_taps({"uniform", {{"size", 4}}}).row,
            (std::vector<double>{0.0, 0.25, 0.25, 0.25, 0.25}));
  const SeparableFilter c =
      stage_taps({"correlate1d", {{"taps", std::vector<double>{1, 2, 3}}, {"axis", 0}}});
  EXPECT_EQ(c.row, std::vector<double>{1.0});
  EXPECT_EQ(c.col, (std::vector<double>{3, 2, 1}));  // correlation reversed to convolution
  // A value of the wrong kind is a usage error naming the parameter, not a crash.
  try {
    (void)stage_taps({"gaussian", {{"sigma", std::string("2")}}});
    ADD_FAILURE() << "a text sigma passed";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::usage);
    EXPECT_NE(std::string(e.what()).find("sigma must be"), std::string::npos) << e.what();
  }
  EXPECT_THROW(stage_taps({"gaussian", {{"size", 3}}}), Error);  // no such parameter
  EXPECT_THROW(stage_taps({"median", {{"size", StageSize{3, 3}}}}), Error);
  EXPECT_THROW(stage_taps({"blur", {}}), Error);
}

}  // namespace
}  // namespace ooc

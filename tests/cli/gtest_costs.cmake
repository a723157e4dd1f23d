# The COST (about how many seconds on a 2-core machine) of test_cli's long GoogleTest cases, read
# by ctest after gtest_discover_tests' lists (TEST_INCLUDE_FILES, CMakeLists.txt beside this file
# says why the long tests carry a COST). A case renamed or gone is simply not matched.
set_tests_properties(cli.OocconvCli.TiffOutputPast4GiBIsABigTiffThatOtherReadersOpen
                     PROPERTIES COST 63)
set_tests_properties(cli.OocconvCli.TenGiBSyntheticImageStaysUnderTheMemoryLimit
                     PROPERTIES COST 44)
set_tests_properties(cli.OocconvCli.MultiGiBSparseRawFileStaysUnderTheMemoryLimit
                     PROPERTIES COST 21)
set_tests_properties(cli.OocconvCli.QuietSilencesDefaultProgressLinesButNotAnExplicitProgressLog
                     PROPERTIES COST 13)
set_tests_properties(cli.OocconvCli.TiffOutputOfBandsThatSplitStripsAndTilesRoundTrips
                     PROPERTIES COST 10)

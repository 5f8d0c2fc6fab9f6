# Third-party libraries, all from Debian's packages (scripts/setup installs them).
find_package(OpenMP REQUIRED COMPONENTS CXX)

# OpenBLAS, OpenMP build: one thread pool with rensa's kernels (the pthread build next to an
# OpenMP pool runs 2-5x slower on 2 cores). Prefer its directory over the alternatives' default.
set(_rensa_multiarch "${CMAKE_LIBRARY_ARCHITECTURE}")
find_library(RENSA_OPENBLAS_LIBRARY NAMES openblas
             HINTS /usr/lib/${_rensa_multiarch}/openblas-openmp NO_DEFAULT_PATH)
find_library(RENSA_OPENBLAS_LIBRARY NAMES openblas REQUIRED)
find_path(RENSA_OPENBLAS_INCLUDE_DIR cblas.h
          HINTS /usr/include/${_rensa_multiarch}/openblas-openmp NO_DEFAULT_PATH)
find_path(RENSA_OPENBLAS_INCLUDE_DIR cblas.h REQUIRED)
if(NOT RENSA_OPENBLAS_LIBRARY MATCHES "openmp")
  message(WARNING "rensa: OpenBLAS at ${RENSA_OPENBLAS_LIBRARY} may not be the OpenMP build (libopenblas-openmp-dev)")
endif()
# The cpu eigh kernel calls LAPACK's ssyevd_/dsyevd_, which Debian's OpenBLAS builds export.
include(CheckLibraryExists)
check_library_exists(${RENSA_OPENBLAS_LIBRARY} dsyevd_ "" RENSA_OPENBLAS_HAS_LAPACK)
if(NOT RENSA_OPENBLAS_HAS_LAPACK)
  message(FATAL_ERROR "rensa: OpenBLAS at ${RENSA_OPENBLAS_LIBRARY} exports no LAPACK (dsyevd_), which the cpu eigh kernel needs")
endif()
# Installed libraries keep a run path to that directory (it is not a default linker path), so
# they load the OpenMP build whichever build the system's alternatives select.
set(CMAKE_INSTALL_RPATH_USE_LINK_PATH ON)
add_library(rensa_openblas INTERFACE)
target_link_libraries(rensa_openblas INTERFACE ${RENSA_OPENBLAS_LIBRARY})
target_include_directories(rensa_openblas SYSTEM INTERFACE ${RENSA_OPENBLAS_INCLUDE_DIR})

# oneDNN. Debian's dnnl-config.cmake requires OpenCL development files that libdnnl-dev does not
# pull in, so locate the library directly.
find_path(RENSA_DNNL_INCLUDE_DIR oneapi/dnnl/dnnl.h REQUIRED)
find_library(RENSA_DNNL_LIBRARY NAMES dnnl REQUIRED)
add_library(rensa_dnnl INTERFACE)
target_link_libraries(rensa_dnnl INTERFACE ${RENSA_DNNL_LIBRARY})
target_include_directories(rensa_dnnl SYSTEM INTERFACE ${RENSA_DNNL_INCLUDE_DIR})

# zlib: .npz (zip) entries and the gzip-compressed IDX files of the MNIST datasets.
find_package(ZLIB REQUIRED)
# Image files: libjpeg-turbo's TurboJPEG API (JPEG, with reduced-size decoding) and libpng.
find_package(PkgConfig REQUIRED)
pkg_check_modules(RENSA_TURBOJPEG REQUIRED IMPORTED_TARGET libturbojpeg)
find_package(PNG REQUIRED)
# HDF5 (optional, Debian's libhdf5-dev): save_hdf5 / load_hdf5. Without it rensa builds and those
# calls throw NotImplementedError saying so.
option(RENSA_USE_HDF5 "Read and write HDF5 files (needs libhdf5-dev)" ON)
if(RENSA_USE_HDF5)
  pkg_check_modules(RENSA_HDF5 IMPORTED_TARGET hdf5)
endif()
if(RENSA_HDF5_FOUND)
  message(STATUS "rensa: HDF5 ${RENSA_HDF5_VERSION}: save_hdf5 and load_hdf5 are available")
else()
  message(STATUS "rensa: HDF5 not used (libhdf5-dev not found or RENSA_USE_HDF5=OFF): save_hdf5 and load_hdf5 "
                 "will throw NotImplementedError")
endif()
# nlohmann-json (header-only, used privately): the training log.
find_package(nlohmann_json 3 REQUIRED)

# Open MPI (C bindings only): rensa::mn, the multi-node layer. The core library never links it.
option(RENSA_BUILD_MN "Build rensa::mn, the multi-node layer (needs MPI)" ON)
if(RENSA_BUILD_MN)
  set(MPI_CXX_SKIP_MPICXX ON)  # no deprecated C++ bindings: the C API is all rensa::mn uses
  find_package(MPI REQUIRED COMPONENTS CXX)
  find_package(Threads REQUIRED)
endif()

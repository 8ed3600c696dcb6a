# The device path: CUDA toolkit (nvcc, runtime) and NCCL, found when SC_WITH_CUDA is
# AUTO or ON. Sets SC_HAVE_CUDA, SC_HAVE_NCCL, SC_DEVICE_LIBS and SC_DEVICE_DEFS.
set(SC_HAVE_CUDA OFF)
set(SC_HAVE_NCCL OFF)
set(SC_DEVICE_LIBS ${CMAKE_DL_LIBS})
set(SC_DEVICE_DEFS "")

if(NOT SC_WITH_CUDA MATCHES "^(AUTO|ON|OFF)$")
  message(FATAL_ERROR "SC_WITH_CUDA is '${SC_WITH_CUDA}'; it takes AUTO, ON or OFF")
endif()

if(NOT SC_WITH_CUDA STREQUAL "OFF")
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      # Hopper (H100/H200) machine code plus PTX that newer GPUs compile at load time.
      set(CMAKE_CUDA_ARCHITECTURES 90)
    endif()
    enable_language(CUDA)
    find_package(CUDAToolkit)
  endif()
  if(CMAKE_CUDA_COMPILER AND CUDAToolkit_FOUND)
    set(SC_HAVE_CUDA ON)
    # NCCL: the toolkit's own copy, NCCL_HOME, or a system one.
    find_path(SC_NCCL_INCLUDE_DIR nccl.h
              HINTS $ENV{NCCL_HOME}/include ${CUDAToolkit_INCLUDE_DIRS})
    find_library(SC_NCCL_LIBRARY nccl
                 HINTS $ENV{NCCL_HOME}/lib ${CUDAToolkit_LIBRARY_DIR}
                       ${CUDAToolkit_LIBRARY_ROOT}/lib)
    if(SC_NCCL_INCLUDE_DIR AND SC_NCCL_LIBRARY)
      set(SC_HAVE_NCCL ON)
    endif()
  elseif(SC_WITH_CUDA STREQUAL "ON")
    message(FATAL_ERROR "SC_WITH_CUDA=ON but no CUDA toolkit was found (nvcc and the "
                        "runtime); install it, set CUDAToolkit_ROOT, or use SC_WITH_CUDA=AUTO")
  endif()
endif()

if(SC_HAVE_CUDA)
  list(APPEND SC_DEVICE_LIBS CUDA::cudart)
  list(APPEND SC_DEVICE_DEFS SC_HAVE_CUDA=1)
  set(CMAKE_CUDA_STANDARD 17)
  set(CMAKE_CUDA_FLAGS "${CMAKE_CUDA_FLAGS} -Xcompiler=-Wall,-Wextra")
  include_directories(SYSTEM ${CUDAToolkit_INCLUDE_DIRS})
endif()
if(SC_HAVE_NCCL)
  list(APPEND SC_DEVICE_LIBS ${SC_NCCL_LIBRARY})
  list(APPEND SC_DEVICE_DEFS SC_HAVE_NCCL=1)
  include_directories(SYSTEM ${SC_NCCL_INCLUDE_DIR})
endif()
message(STATUS "shardcomm device path: CUDA ${SC_HAVE_CUDA}, NCCL ${SC_HAVE_NCCL} "
               "(SC_WITH_CUDA=${SC_WITH_CUDA})")
set(SC_HAVE_CUDA_BUILD ${SC_HAVE_CUDA} CACHE INTERNAL "the device path is built")
